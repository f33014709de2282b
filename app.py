"""The site's entry: `streamlit run app.py` serves router.py (the pages) once what Home needs is loaded.

Served as an st.App so that its lifespan (ui/server_start.py) runs before the server answers anyone: a fresh
server's first page then draws without importing the site first.
"""

import streamlit as st

from ui.server_start import lifespan

app = st.App("router.py", lifespan=lifespan)
