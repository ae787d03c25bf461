"""Judge quality of the live panel: bias audit, stability, benchmarking judges against people.

`debate calibrate` runs the panel on items with a known answer and records what each judge
got right (track records and the judgments table, :mod:`debate.judgments`); `debate audit`
and `debate stability` read recorded runs or judge them again.
"""
