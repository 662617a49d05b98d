"""Reports and files: the Markdown and HTML reports, the figures, and the one place that
writes the analysis's tables and figures to disk.

The last stage of ``voirdire.analysis``: it may import every other stage.
"""
