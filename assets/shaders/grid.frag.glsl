// Lines one pixel wide at multiples of u_spacing (screen-space derivatives keep them thin at any
// distance), faded out towards the edge of the square.
in vec3 v_world;

uniform float u_spacing;
uniform float u_extent;
uniform vec4 u_color;

out vec4 o_color;

void main() {
  vec2 g = v_world.xz / u_spacing;
  vec2 px = abs(fract(g - 0.5) - 0.5) / max(fwidth(g), vec2(1e-6));
  float line = 1.0 - min(min(px.x, px.y), 1.0);
  float fade = 1.0 - smoothstep(0.6, 1.0, length(v_world.xz) / u_extent);
  float alpha = u_color.a * line * fade;
  if (alpha <= 0.002) discard;
  o_color = vec4(u_color.rgb, alpha);
}
