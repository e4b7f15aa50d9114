"""gangsched.sim"""
