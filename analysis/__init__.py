"""voirdire.analysis"""
