tlio validate
