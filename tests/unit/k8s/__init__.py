"""Unit tests of gangsched.k8s: the API client's credentials, retries and watch backoff."""
