"""proofs: one module per paper lemma - Z3/cvc5 encodings, interval certificates and mutants."""
