"""The lessons' own computations: the model panels and where their figures come from, the token-cost
calculator, a malformed call's cost, the failure gallery.
"""
