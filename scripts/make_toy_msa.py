"""Write data/toy_msa.fasta: a small made-up MSA in which two columns co-vary (lesson 04).

    python scripts/make_toy_msa.py

The table has S = 48 sequences and R = 60 positions (numbered from 1, as biologists do).
- Positions 37 and 54 are coupled: half of the sequences carry L at 37 and V at 54, the other
  half S at 37 and T at 54, never mixed (the source notes' L<->V / S<->T example: a mutation at one
  position is compensated at the other, as for two residues in contact).
- Positions 12 and 20 are decoys with the same letters in the same proportions (L/S and V/T,
  half each) but shuffled independently: every single column looks like 37 or 54, only the pairing
  across sequences tells the two pairs apart.
- Every other position keeps a consensus residue, replaced by a random one with probability 0.05.
Python's own `random.Random(seed)` makes the file identical on every machine and version.
"""
from __future__ import annotations

import random
from pathlib import Path

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
N_SEQUENCES, LENGTH, SEED, MUTATION_RATE = 48, 60, 2021, 0.05
COUPLED = {37: "LS", 54: "VT"}   # 1-based position -> (letter of group A, letter of group B)
DECOYS = {12: "LS", 20: "VT"}


def toy_msa(n_sequences: int = N_SEQUENCES, length: int = LENGTH, seed: int = SEED) -> list[str]:
    rng = random.Random(seed)
    consensus = [rng.choice(AMINO_ACIDS) for _ in range(length)]
    rows = []
    for _ in range(n_sequences):
        rows.append([aa if rng.random() > MUTATION_RATE else rng.choice(AMINO_ACIDS)
                     for aa in consensus])
    groups = [s % 2 for s in range(n_sequences)]  # half group A (0), half group B (1)
    rng.shuffle(groups)
    for position, letters in COUPLED.items():  # the same group decides both coupled positions
        for row, group in zip(rows, groups):
            row[position - 1] = letters[group]
    for position, letters in DECOYS.items():  # each decoy column gets its own shuffle
        own = [s % 2 for s in range(n_sequences)]
        rng.shuffle(own)
        for row, group in zip(rows, own):
            row[position - 1] = letters[group]
    return ["".join(row) for row in rows]


def main() -> None:
    path = Path(__file__).resolve().parent.parent / "data" / "toy_msa.fasta"
    rows = toy_msa()
    lines = [f">seq{s + 1:02d} toy sequence {s + 1} of {len(rows)}\n{row}\n" for s, row in enumerate(rows)]
    path.write_text("".join(lines))
    print(f"wrote {path} ({len(rows)} sequences x {len(rows[0])} positions)")


if __name__ == "__main__":
    main()
