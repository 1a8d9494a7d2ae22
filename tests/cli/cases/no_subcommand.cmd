tlio
