tlio --help
tlio --version
