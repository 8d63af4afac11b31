// main() of a model program: the driver with the model that BERTC_MODEL defined.
#include "tools/driver.h"

int main(int argc, char** argv) { return bertc::tools::run_driver(argc, argv, bertc::frontend::model_definition()); }
