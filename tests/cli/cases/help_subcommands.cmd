tlio cat --help
tlio diff --help
