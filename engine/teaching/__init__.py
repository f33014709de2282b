"""The lessons' own computations: the token-cost calculator, a malformed call's cost, the failure gallery.
"""
