tlio frobnicate
