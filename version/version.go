package version

// Version is Drover's release version.
const Version = "0.1.0"
