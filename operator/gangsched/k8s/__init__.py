"""gangsched.k8s"""
