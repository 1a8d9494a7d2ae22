tlio bigram generate DATA/hf --tokens 5
