"""The loop a harness runs (render, generate, parse, run, feed back), its token ledger and the tools'
implementations; the workspace they act on and the sandbox that runs visitors' tests are engine/sandbox/.
"""
