#include "analyzer/driver/driver.h"
