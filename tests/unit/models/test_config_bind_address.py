"""metricsBindAddress / probesBindAddress: IP addresses, 0.0.0.0 by default (what manifests/deployment.yaml relies on:
the kubelet probes the pod's IP, Prometheus scrapes it); anything else is refused naming the field.

Oracle: kube-scheduler's `--bind-address` (cmd/kube-scheduler/app/options: an IP address, 0.0.0.0 for all
interfaces), which these options mirror; Python's ipaddress decides what an IP address is."""

from __future__ import annotations

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.config import config_from_mapping


def test_defaults_listen_on_every_interface() -> None:
    config = config_from_mapping({})
    assert (config.metrics_bind_address, config.probes_bind_address) == ("0.0.0.0", "0.0.0.0")


@pytest.mark.parametrize("address", ["127.0.0.1", "::", "::1", "10.0.0.7"])
def test_an_ip_address_is_accepted(address: str) -> None:
    config = config_from_mapping({"metricsBindAddress": address, "probesBindAddress": address})
    assert config.metrics_bind_address == config.probes_bind_address == address


@pytest.mark.parametrize("key", ["metricsBindAddress", "probesBindAddress"])
def test_anything_else_is_refused_naming_the_field(key: str) -> None:
    with pytest.raises(InvalidField) as err:
        config_from_mapping({key: "localhost:8080"})
    assert err.value.field == key and "not an IP address" in str(err.value)
