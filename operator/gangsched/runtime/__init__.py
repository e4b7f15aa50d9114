"""gangsched.runtime"""
