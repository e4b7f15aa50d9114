"""gangsched.core"""
