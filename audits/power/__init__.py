"""The auditor's power suite: known-broken GTM implementations (:mod:`.broken`), their numerical
halting-time laws (:mod:`.distribution`) and the Sparse Vector family (:mod:`.svt`)."""
