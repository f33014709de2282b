"""Everything that imports torch: finding and loading weights, the CPU dtype choice, the decode loop that
shows its work, the prefix cache, one step's distribution and the live generation entry points.
"""
