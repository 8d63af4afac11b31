// The `bertc` program: the driver with the built-in BERT pretraining model.
#include "frontend/bert.h"

BERTC_MODEL(bertc::frontend::bert_model_definition())
