tlio validate --bogus x
