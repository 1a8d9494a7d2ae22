// tlio/tlio.hpp: the whole C++ API.
#pragma once

#include "tlio/bigram.hpp"
#include "tlio/bnb.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/convert.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/dtype.hpp"
#include "tlio/edit.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/header.hpp"
#include "tlio/interrupt.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"
#include "tlio/shape.hpp"
#include "tlio/version.hpp"
#include "tlio/writer.hpp"
