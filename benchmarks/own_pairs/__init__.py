"""A user's own pairs as a benchmark: reading and bounding the data, checking it, and the
sandboxed Jinja2 templates its prompts are made from (:mod:`.benchmark`)."""
