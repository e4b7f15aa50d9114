"""gangsched.sim: a Kubernetes API server emulator with simulated nodes and kubelets, for the demo, tests and
benchmarks.

Contract: a real HTTP server (apiserver.py over registry.py and store.py) that the operator, unmodified, and the
real kubectl use as they would a kube-apiserver v1.37 (docs/emulator.md), strict where kube-apiserver is strict;
every behaviour follows the Kubernetes source (cited by its conformance test in tests/conformance/). serve.py starts
a whole simulated cluster; kubelet.py runs bound pods; disruption.py and namespace_controller.py do what
kube-controller-manager does for PDBs and namespaces; faults.py injects failures on demand. It shares
vocabulary with the operator (core, models, k8s.client), never its runtime or handlers.
"""
