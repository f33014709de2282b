"""What every page shares, one concern per module: words, state, models, drawing, chrome, the tool editor.

Nothing here computes a figure: every number comes from engine/.
"""
