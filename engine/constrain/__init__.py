"""Everything that imports xgrammar: grammars over a request's tools and the masks they give at each token
(warming them when the server starts is engine/startup/warmup.py's).
"""
