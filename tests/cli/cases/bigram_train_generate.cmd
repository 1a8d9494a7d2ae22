tlio bigram train DATA/model_text.txt TMP/bigram
tlio validate TMP/bigram
tlio inspect TMP/bigram
tlio bigram generate TMP/bigram --prompt "The " --tokens 60 --seed 7
tlio bigram generate TMP/bigram --tokens 40 --seed 7 --temperature 0
