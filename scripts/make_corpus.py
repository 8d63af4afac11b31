#!/usr/bin/env python3
"""Writes examples/data/corpus.txt and examples/data/vocab.txt: bertc's bundled training text.

The text is generated here from our own templates and word lists (so it may be shipped with no
licence question): short documents, each about one person, their town, pet, work and habits,
one sentence a line, a blank line between documents. Facts repeat within a document and differ
between documents, so a small BERT can learn both masked words (which colour, which town) and
whether a second sentence continues the first (next-sentence prediction).

The vocabulary holds BERT's special tokens, punctuation, every word of the text, and single
letters and digits with their ## continuations, so any lower-case ASCII word still tokenizes.

Usage: scripts/make_corpus.py [OUT_DIR]   (deterministic: the same files every time)
"""
import os
import random
import re
import string
import sys

NAMES = """anna ben clara daniel emma felix grace henry iris jonas kara leo maya noah olga paul
quinn rosa sam tara umar vera will xena yusuf zoe adam bella carl dora erik fiona gus hana ivan
julia karl lina max nora oscar""".split()
TOWNS = """york oslo lima porto riga bern nice dover cork perth malmo galway tartu split bruges
lucca hanoi quito""".split()
COLOURS = "red blue green black white brown grey golden orange yellow".split()
ANIMALS = "cat dog fox owl rabbit parrot horse goat turtle hamster".split()
PET_NAMES = """pip milo luna toby bella max coco rocky daisy oscar ziggy pepper biscuit mochi
nugget shadow""".split()
DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
PLACES = "park market river library harbour garden beach forest bakery station".split()
FOODS = "fish carrots apples seeds cheese bread rice berries corn lettuce".split()
SEASONS = "spring summer autumn winter".split()
ADJECTIVES = "quiet busy green cold warm bright calm crowded windy lovely".split()
JOBS = "teacher baker nurse farmer painter driver doctor pilot writer builder".split()
HOBBIES = "chess music cooking cycling reading swimming dancing fishing hiking painting".split()
OBJECTS = "coin key letter map ring shell stone watch book hat".split()
FURNITURE = "table bed sofa chair desk".split()
WEATHER = "rains snows storms".split()


def person_document(rng):
    name, town, pet = rng.choice(NAMES), rng.choice(TOWNS), rng.choice(PET_NAMES)
    animal, colour = rng.choice(ANIMALS), rng.choice(COLOURS)
    place, day = rng.choice(PLACES), rng.choice(DAYS)
    food, other_food = rng.sample(FOODS, 2)
    job, hobby = rng.choice(JOBS), rng.choice(HOBBIES)
    pronoun = rng.choice(["she", "he"])
    sentences = [
        f"{name} lives in {town}.",
        f"{name} has a {colour} {animal} called {pet}.",
        f"every {day}, {name} walks to the {place} with {pet}.",
        f"the {animal} likes {food}, but it does not like {other_food}.",
        f"in the {rng.choice(SEASONS)}, the {place} in {town} is {rng.choice(ADJECTIVES)}.",
        f"{name} works as a {job} and enjoys {hobby}.",
        f"{pronoun} once found a {rng.choice(OBJECTS)} near the {place}.",
        f"{pet} sleeps under the {rng.choice(FURNITURE)} when it {rng.choice(WEATHER)}.",
        f"the {colour} {animal} is {rng.randint(2, 15)} years old.",
        f"people in {town} know {name} as the {job} with the {colour} {animal}.",
    ]
    first, rest = sentences[:2], sentences[2:]
    rng.shuffle(rest)
    return first + rest[: rng.randint(3, len(rest))]


def build_vocab(text):
    words = sorted(set(re.findall(r"[a-z]+|[0-9]+", text)))
    pieces = list(string.ascii_lowercase + string.digits)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += list(string.punctuation)
    vocab += [w for w in words if w not in vocab]
    vocab += [c for c in pieces if c not in vocab]
    vocab += ["##" + c for c in pieces]
    return vocab


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "examples", "data"))
    rng = random.Random(20261129)
    docs = [person_document(rng) for _ in range(3000)]
    text = "\n\n".join("\n".join(d) for d in docs) + "\n"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "corpus.txt"), "w") as f:
        f.write(text)
    vocab = build_vocab(text)
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    print(f"{len(docs)} documents, {len(text.split())} words, {len(vocab)} vocabulary entries -> {out}")


if __name__ == "__main__":
    main()
