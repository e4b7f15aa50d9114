"""gangsched.models"""
