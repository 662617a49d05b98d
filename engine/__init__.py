"""voirdire.engine"""
