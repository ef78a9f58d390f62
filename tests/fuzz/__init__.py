"""The differential fuzzer: random valid graphs, compiled by kcc and checked against the
reference interpreter (x86) or ptxas (PTX); regressions it found."""
