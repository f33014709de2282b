"""Running a model, here or on a server: finding and loading weights, the CPU dtype choice, the decode loop that
shows its work, the prefix cache, one step's distribution and the live generation entry points (these use torch,
imported when a model loads). These modules import no torch: weights.py (where a model's weights are),
availability.py (whether a model can be had now), remote.py (an OpenAI-compatible server's client, giving the
same results over HTTP, each request through server_http.py) and results.py (those results as plain data, as
a lesson pack reads them too).
"""
