"""gangsched.k8s: the only code that talks to the Kubernetes API.

Contract: the HTTP client (client.py: raw JSON, one ApiError for every failure) with its credentials, retry policy
and rate limit; the reflector (list+watch into a sink); the binder (pods/binding with UID preconditions); the
coalescing writers (PodGroup status, pod conditions and annotations, events); leader election on a Lease and the
write fence built on it. Bodies are plain dicts: parsing into the scheduler's values is models/' job. Never
imports runtime or handlers.
"""
