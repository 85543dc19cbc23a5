"""The in-engine audit's contract, shared by the engine that keeps entries (hotfloat.seams.audit) and the validator
that opens and judges them (hotfloat.qualify.audit): the keyed stream every decision, window and seal is drawn from
(`philox`), and what one audited call of each slot keeps (`layout`). Imports nothing of either side."""
