// Package fill builds values with every exported field set to a distinct
// non-zero value, for the tests that check a conversion or an encoding
// loses nothing: helper/apiconv's by-name conversions and wire's bodies.
// A field added to a type is filled too, so such a test fails until the
// new field survives.
//
// Importers: tests only.
package fill
