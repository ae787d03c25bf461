"""Council mode: the same panel ranks N candidate answers to one question."""
