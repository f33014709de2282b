"""What a server process does once at its start: the warm-up, which loads pieces from every layer below
(the tokenizer, the model's decode loop, the harness, the lessons' figures, the grammars), so it sits above them.
"""
