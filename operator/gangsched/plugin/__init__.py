"""`kubectl gang`: a kubectl plugin (the `kubectl-gang` executable installed with the package) that shows gangs as
kubectl users see them: trees (gang group > gang > role > pods), why a pod is pending, and the waiting gangs.

Layout: `view.py` is pure (API objects in, text out); `main.py` reads the objects with the project's client
(k8s/client.py, the kubeconfig as kubectl finds it) and prints. Read-only: it never writes to the cluster.
"""
