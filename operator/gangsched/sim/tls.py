"""A self-signed serving certificate for the emulator, made in memory when it starts.

Contract: `serving_material(hosts) -> (cert_pem, key_pem)`: an ECDSA P-256 key and a certificate valid for a year
whose subjectAltNames are the given hosts (IP addresses as IP SANs, names as DNS SANs) plus localhost and
127.0.0.1; it is its own CA, so a kubeconfig's `certificate-authority-data` is the certificate itself.
`ssl_context(cert_pem, key_pem)` is a server-side ssl.SSLContext for aiohttp.

Why TLS at all: kubectl (client-go's clientcmd) only sends a kubeconfig's credentials to an https server, so a
token-authenticating emulator must speak TLS. Needs `cryptography` (the `sim` extra).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Iterable


def serving_material(hosts: Iterable[str]) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    seen: set[str] = set()
    for host in [*hosts, "localhost", "127.0.0.1"]:
        if not host or host in seen or host in ("0.0.0.0", "::"):
            continue
        seen.add(host)
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gangsched-sim-apiserver")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert_pem, key_pem


def ssl_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="gangsched-sim-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        with open(cert_path, "wb") as f:
            f.write(cert_pem)
        with open(os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context
