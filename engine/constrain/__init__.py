"""Everything that imports xgrammar: grammars over a request's tools, the masks they give at each token,
and warming them when the server starts.
"""
