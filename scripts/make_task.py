#!/usr/bin/env python3
"""Writes examples/data/task/train.tsv and dev.tsv: bertc's bundled fine-tuning task.

"Does it fit?": single-sentence acceptability in the style of GLUE's CoLA. Each line holds a
sentence written by make_corpus.py's templates, either as written (label "fits") or with one word
replaced by a word of another kind (a town by a food, a colour by a job: label "odd"), half and
half. Telling them apart means knowing which kind of word each place in a sentence takes, what
BERT's masked-word pretraining on the bundled corpus learns; the documents are drawn with another
seed than the corpus, so no sentence pair of the task is copied from it.

Columns (with a header): sentence, label.
Usage: scripts/make_task.py [OUT_DIR]   (deterministic: the same files every time)
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus  # noqa: E402

KINDS = [make_corpus.NAMES, make_corpus.TOWNS, make_corpus.COLOURS, make_corpus.ANIMALS, make_corpus.PET_NAMES,
         make_corpus.DAYS, make_corpus.PLACES, make_corpus.FOODS, make_corpus.SEASONS, make_corpus.ADJECTIVES,
         make_corpus.JOBS, make_corpus.HOBBIES, make_corpus.OBJECTS, make_corpus.FURNITURE]


def kind_of(word):
    for i, kind in enumerate(KINDS):
        if word in kind:
            return i
    return None


def corrupted(sentence, rng):
    """The sentence with one of its kind words replaced by a word of another kind, or None."""
    words = sentence.split(" ")
    places = [i for i, w in enumerate(words) if kind_of(w.strip(".,")) is not None]
    if not places:
        return None
    i = rng.choice(places)
    bare = words[i].strip(".,")
    other = rng.choice([k for j, k in enumerate(KINDS) if j != kind_of(bare) and bare not in k])
    words[i] = words[i].replace(bare, rng.choice(other))
    return " ".join(words)


def examples(rng, count):
    rows = []
    while len(rows) < count:
        sentence = rng.choice(make_corpus.person_document(rng))
        if len(rows) % 2 == 0:
            rows.append((sentence, "fits"))
        elif (odd := corrupted(sentence, rng)) is not None:
            rows.append((odd, "odd"))
    rng.shuffle(rows)
    return rows


def write(path, rows):
    with open(path, "w") as f:
        f.write("sentence\tlabel\n")
        for row in rows:
            f.write("\t".join(row) + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.normpath(
        os.path.join(os.path.dirname(__file__), "..", "examples", "data", "task"))
    rng = random.Random(20261203)
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "train.tsv"), examples(rng, 2000))
    write(os.path.join(out, "dev.tsv"), examples(rng, 500))
    print(f"2000 training and 500 dev sentences -> {out}")


if __name__ == "__main__":
    main()
