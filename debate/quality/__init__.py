"""Judge quality: bias audit, people's labels, validity, track records, benchmarking judges.

`debate calibrate` runs the panel on items with a known answer and records what each judge
got right; the audit and the validity report read those records.
"""
