"""Calibration of the resident-engine rule, a module each: `collect` (on the device) boots stock engines, optionally
handicapped stock engines (a validator-added GPU delay, the positive control) and candidate engines, as resident
engines exactly like a qualification's, and writes their pass times round by round; `analyse` (anywhere) turns raw
files into the rule's error rates, counted on independent units, with `noise`, `model` and `robust` for the secondary
figures; `files` holds both records and reads them back as untrusted input; `evidence` forms qualifications from the
rounds a collection kept."""
