"""hello-memory: multi-tier cognitive memory for LLM agents."""

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())
