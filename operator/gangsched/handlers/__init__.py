"""gangsched.handlers"""
