package faults_test

import "os"

// long selects the long form (`make chaos`): more photos, longer outages.
var long = os.Getenv("LIGHTBOX_CHAOS") != ""
