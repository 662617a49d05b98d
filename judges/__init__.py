"""voirdire.judges"""
