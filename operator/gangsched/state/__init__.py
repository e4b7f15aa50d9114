"""gangsched.state"""
