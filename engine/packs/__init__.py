"""Lesson packs: recording every model panel's run with one model (prepare), and reading and checking a
pack (pack); a single recorded run (trace).
"""
