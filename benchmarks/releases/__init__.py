"""The public releases and logs voirdire fetches: where each comes from, verified file by
file against its git blob ids, and converted once (:mod:`.catalogue` finds one by name)."""
