"""The tool-calling explainer's engine: every figure a page shows is computed here.

Pure Python; never imports streamlit. Modules that only count tokens never import torch.
"""
