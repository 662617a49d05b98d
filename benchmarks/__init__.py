"""voirdire.benchmarks"""
